"""Runnable examples of langmem-cog's LangChain and LangGraph integrations (see README "Examples").

Run them from the repository root, e.g. ``python -m examples.chatbot --user alice --say "hi"``.
"""
