"""The offline plan: the real program under Pulumi mocks, printed as `pulumi preview` would (`python -m plan`)."""
