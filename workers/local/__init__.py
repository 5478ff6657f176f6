"""Local commands beside the CLI, without Temporal or S3: `policyforge train` (`train`),
`check-reward` / `check-judge` (`checks`) and the benches (`bench`, `bench_plain`,
`bench_train`, `bench_sandbox`)."""
