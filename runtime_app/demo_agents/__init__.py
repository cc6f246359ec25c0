"""The bundled demo agents: ADK agent packages, like the ones `adk web` serves."""
