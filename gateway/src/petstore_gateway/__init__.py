"""The Petstore v2 HTTP gateway: HTTP in front, gRPC to the pet, order and user services behind."""
