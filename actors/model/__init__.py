"""Model gateways: one streamed model call at a time, OpenAI-compatible or Anthropic.

:mod:`actors.model.types` is the vocabulary every gateway speaks (settings, reply, error, the
:class:`~actors.model.types.ChatModel` protocol); :func:`actors.model.providers.make_gateway`
builds the configured provider's gateway. :mod:`actors.model.sdk_gateway` is what both gateways do
alike, under the retry rules of :mod:`actors.model.retry`; the OpenAI-compatible one is
:mod:`actors.model.openai_gateway` (its stream folded by :mod:`actors.model.openai_stream`), the
Anthropic one :mod:`actors.model.anthropic_gateway` (its requests built by
:mod:`actors.model.anthropic_request`, its stream folded by :mod:`actors.model.anthropic_stream`).
"""
