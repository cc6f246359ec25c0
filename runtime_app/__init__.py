"""The agent runtime: loading agents like `adk web AGENTS_DIR`, running them
(chat, resume, stop, rewind) on our services, the offline scripted model and
the demo. It sits above the feature apps and uses them; none imports it.
"""
