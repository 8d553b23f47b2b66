"""What a user declares, validated. No Pulumi resources (the typed arguments name `pulumi.Input`, and the stack
front end reads `pulumi.Config`).

`args` (the components' typed arguments), `models` (pydantic models of every section), `problems` (one line per
problem, `ConfigError`), `paths` (key paths in each front end's spelling), `checks` (rules across fields and
sections), `config` (the whole platform: `parse_stack_config`, `validate_platform_args`, `StackConfig`) and `stack`
(the stack file front end, `load_stack_config`).
"""
