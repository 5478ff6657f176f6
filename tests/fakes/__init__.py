"""Local stand-ins for external services, speaking their real wire protocols."""
