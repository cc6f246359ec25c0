"""Who may see and do what: the login rule shared by pages, the API and websockets.

The bottom of the house: every app may import it; it imports no app.
"""
