"""LLM agents: each turns one prompt (a file in prompts/) into one provider call and parses it."""
