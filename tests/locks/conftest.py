from tests.servers.redis import redis_auth_server, redis_server, redis_tls_server

__all__ = ["redis_auth_server", "redis_server", "redis_tls_server"]
