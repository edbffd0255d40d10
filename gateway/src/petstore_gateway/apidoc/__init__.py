"""The API description (Swagger 2.0 and OpenAPI 3.0, rendered once from the operations'
declarations) and Swagger UI."""
