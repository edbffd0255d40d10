"""The Petstore user service: owns accounts, password hashes and sessions (petstore.user.v1.UserService)."""
