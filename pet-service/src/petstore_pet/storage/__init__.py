"""Where pets and their images live: one Protocol, a MongoDB and an in-memory implementation."""
