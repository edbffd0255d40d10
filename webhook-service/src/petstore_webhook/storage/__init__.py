"""Where the webhook service keeps its endpoints and deliveries."""
