"""Local-process tooling: FerretDB for tests and the whole stack as processes."""
