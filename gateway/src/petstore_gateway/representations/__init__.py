"""Wire representations (JSON and XML) of the resources, and their mapping to protobuf messages."""
