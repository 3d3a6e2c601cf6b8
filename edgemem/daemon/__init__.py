"""The daemon: socket server, protocol and client (DESIGN "Socket protocol")."""
