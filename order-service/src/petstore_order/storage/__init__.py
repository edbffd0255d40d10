"""Where orders live: one Protocol, a MongoDB and an in-memory implementation."""
