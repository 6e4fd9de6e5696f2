"""The ground floor: what every stage shares. JSON records (records), the package's own data
folders (paths), the JSON-path language (jsonpath), trial outcomes and their classes
(outcomes), failed-stage records (failures) and a trial's identity (identity).

May import: nothing of mcptrials but the root package; every other package may import it.
"""
