"""Where users and sessions live: one Protocol, a MongoDB and an in-memory implementation."""
