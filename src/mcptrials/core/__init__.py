"""The ground floor: what every stage shares. JSON records (records), the package's own data
folders (paths), the JSON-path language (jsonpath), how a value reads as a number or a date
(values), trial outcomes and their classes (outcomes), failed-stage records (failures), a
trial's identity (identity), the types of the records the stages exchange (record_types) and
of the rows analyze writes for gate and report (rows), and the one spelling of their keys (keys).

May import: nothing of mcptrials but the root package; every other package may import it.
"""
