"""Azurite (the Azure Blob emulator) on a free loopback port."""

from __future__ import annotations

import os

from tests.servers.process import ServerProcess, free_port, start_server

ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (public, documented by Microsoft).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AZURITE = os.path.join(_ROOT, ".tools", "node_modules", ".bin", "azurite-blob")


def start_azurite(log_dir: str) -> ServerProcess:
    port = free_port()
    return start_server(
        "azurite",
        [
            AZURITE,
            "--inMemoryPersistence",
            "--skipApiVersionCheck",
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(port),
            "--silent",
            "--loose",
        ],
        port,
        log_dir,
    )


def connection_string(endpoint: str) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
        f"BlobEndpoint={endpoint}/{ACCOUNT};"
    )


def azure_options(endpoint: str) -> dict[str, str]:
    """Storage options for an Azurite listening at ``endpoint`` (``http://127.0.0.1:PORT``)."""
    return {
        "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
        "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
        "AZURE_STORAGE_ENDPOINT": f"{endpoint}/{ACCOUNT}",
        "ALLOW_HTTP": "true",  # object_store (delta-rs) spelling; deltalog accepts it too
    }
