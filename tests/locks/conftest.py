from tests.servers.redis import redis_auth_server, redis_server

__all__ = ["redis_auth_server", "redis_server"]
