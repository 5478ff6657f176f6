"""LLM providers behind one interface: Anthropic, OpenAI, Gemini, OpenAI-compatible servers."""
