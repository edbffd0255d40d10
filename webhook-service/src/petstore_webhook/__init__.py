"""The Petstore webhook service: signed webhooks for the shop's order and pet events."""
