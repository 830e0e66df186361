"""Sub-commands of the `policydesk` command line, one module per group."""
