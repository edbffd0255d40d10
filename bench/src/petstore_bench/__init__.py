"""The Petstore load benchmark (`python -m petstore_bench`)."""
