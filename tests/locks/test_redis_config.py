"""Parsing Redis lock settings: URI, query parameters, options, TLS; secrets stay hidden."""

from __future__ import annotations

import logging

import pytest

from deltalog.contrib.redis_lock import RedisCommitLock, RedisLockConfig, parse_duration, redis_lock_from_uri
from deltalog.txn.commit.locks import CommitLockConfigError


def test_uri_with_auth_db_and_parameters() -> None:
    config = RedisLockConfig.from_uri(
        "redis://alice:p%40ss-word@redis.internal:6380/3?key_prefix=team:&lease_ttl=2500ms"
        "&acquire_timeout=2m&entry_ttl=2d&socket_timeout=1s&connect_timeout=0.5"
    )
    assert (config.host, config.port, config.db) == ("redis.internal", 6380, 3)
    assert (config.username, config.password) == ("alice", "p@ss-word")
    assert config.key_prefix == "team:" and not config.tls
    assert (config.lease_ttl, config.acquire_timeout, config.entry_ttl) == (2.5, 120.0, 172800.0)
    assert (config.socket_timeout, config.connect_timeout) == (1.0, 0.5)
    assert config.display_uri() == "redis://alice:***@redis.internal:6380/3"
    assert "p@ss-word" not in repr(config)


def test_defaults() -> None:
    config = RedisLockConfig.from_uri("redis://localhost")
    assert (config.host, config.port, config.db, config.password) == ("localhost", 6379, 0, None)
    assert (config.lease_ttl, config.acquire_timeout, config.entry_ttl) == (15.0, 120.0, 86400.0)
    assert config.key_prefix == "deltalog:"


def test_rediss_turns_on_tls_with_ca_options() -> None:
    config = RedisLockConfig.from_uri(
        "rediss://:pw-123@cache:6390/0?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=required",
        {
            "deltalog.lock.redis.ssl_certfile": "/etc/client.pem",
            "deltalog.lock.redis.ssl_keyfile": "/etc/k.pem",
        },
    )
    kwargs = config.client_kwargs()
    assert kwargs["ssl"] is True and kwargs["ssl_ca_certs"] == "/etc/ca.pem"
    assert kwargs["ssl_certfile"] == "/etc/client.pem" and kwargs["ssl_keyfile"] == "/etc/k.pem"
    assert kwargs["ssl_cert_reqs"] == "required" and kwargs["ssl_check_hostname"] is True
    assert config.display_uri().startswith("rediss://:***@cache:6390")
    assert "ssl" not in RedisLockConfig.from_uri("redis://cache").client_kwargs()


def test_options_override_the_uri() -> None:
    config = RedisLockConfig.from_uri(
        "redis://:uri-pw@h/1?lease_ttl=5s",
        {"deltalog.lock.redis.lease_ttl": "7s", "deltalog.lock.redis.db": "4", "REDIS_PASSWORD": "ignored"},
    )
    assert (config.lease_ttl, config.db, config.password) == (7.0, 4, "uri-pw")
    from_env_style = RedisLockConfig.from_uri("redis://h", {"REDIS_USERNAME": "bob", "REDIS_PASSWORD": "env-pw"})
    assert (from_env_style.username, from_env_style.password) == ("bob", "env-pw")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("http://h", "redis:// or rediss://"),
        ("redis://h?colour=blue", "unknown Redis lock parameter 'colour'"),
        ("redis://h?password=secret-in-query", "user info"),
        ("redis://h/notanumber", "database must be a number"),
        ("redis://h?lease_ttl=soon", "not a duration"),
        ("redis://h?lease_ttl=0", "must be positive"),
        ("redis://h?lease_ttl=10ms", "at least 100ms"),
        ("redis://h?lease_ttl=1h&entry_ttl=1h", "three times lease_ttl"),
        ("redis://h?ssl_cert_reqs=maybe", "required, optional or none"),
        ("redis://:pw-in-uri@h:notaport/0", "cannot parse"),
    ],
)
def test_bad_settings_are_config_errors_without_secrets(uri: str, message: str) -> None:
    with pytest.raises(CommitLockConfigError, match=message) as info:
        RedisLockConfig.from_uri(uri)
    assert "secret-in-query" not in str(info.value) and "pw-in-uri" not in str(info.value)


def test_durations() -> None:
    assert parse_duration("500ms", "x") == 0.5
    assert parse_duration("2", "x") == 2.0
    assert parse_duration("1.5m", "x") == 90.0
    assert parse_duration("1d", "x") == 86400.0
    assert parse_duration(3, "x") == 3.0


def test_lock_repr_and_logs_hide_the_password(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    lock = redis_lock_from_uri("redis://u:very-secret-pw@127.0.0.1:1/0", {})
    assert isinstance(lock, RedisCommitLock)
    text = repr(lock) + str(lock) + repr(lock.config)
    assert "very-secret-pw" not in text and "***" in text
    assert "very-secret-pw" not in caplog.text
