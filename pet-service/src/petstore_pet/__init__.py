"""The Petstore pet service: owns pets and their images (gRPC petstore.pet.v1.PetService)."""
