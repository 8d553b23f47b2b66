"""`python -m plan.verify`: after `pulumi up`, does the live cluster match the stack's plan, and does every TPU slice
work? The command line is `cli`; the live checks are `checks`, what the plan expects `expected`, the smoke test
`smoke`."""
