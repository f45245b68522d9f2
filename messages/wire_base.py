"""The base of the host -> extension wire models (:mod:`messages.wire_outbound`,
:mod:`messages.wire_browser`)."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["OutboundModel"]


class OutboundModel(BaseModel):
    """Base of the outbound models: frozen, camelCase on the wire, extra fields refused."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel
    )
