"""Code shared by the Petstore services: settings, logging, gRPC bootstrap, storage helpers."""
