"""What a user declares, validated. No Pulumi resources (the typed arguments name `pulumi.Input`, and the stack
front end reads `pulumi.Config`).

`inputs`, `models`, `ray_models` and `operations` (the pydantic models: the one declaration of every argument, from
which `make generate` writes `args`, the components' typed arguments), `problems` (one line per problem,
`ConfigError`), `paths` (key paths in each front end's spelling), `cross_section` (rules across fields and sections),
`platform_rules` (rules Cloud services enforce on the platform as a whole), `multislice`, and the front ends: `config`
(the whole platform: `parse_stack_config`, `validate_platform_args`, `StackConfig`), `component_args` (each
component's own arguments), `monitoring_args` (SliceMonitoring's) and `stack` (the stack file, `load_stack_config`).
"""
