"""The matrix a user declares: config.yaml and the scenario files loaded and checked against
their JSON Schemas (config), their typed view (specs) and the project-file placeholder
(projectfiles).

May import: core, stats.
"""
