"""Model gateways: one streamed model call at a time, OpenAI-compatible or Anthropic."""
