"""The Petstore order service: owns store orders (gRPC petstore.order.v1.OrderService)."""
