"""The documents every contender works on, generated the same way for all of them."""
import json


def settings_document(size):
    """A settings document of `size` bytes (UTF-8) printed pretty with a 2-space indent:
    realistic settings with one top-level "counter" (the field every writer changes); bigger
    documents add entries to a "services" list, and a "note" pads to the exact size.
    Deterministic."""
    document = {
        "name": "ccsync benchmark service",
        "version": 3,
        "theme": "dark",
        "fontSize": 13,
        "ratio": 1.5,
        "enabled": True,
        "owner": None,
        "server": {
            "host": "127.0.0.1",
            "port": 8080,
            "tls": {"enabled": False, "certificate": "/etc/ccsync/cert.pem"},
            "timeouts": {"connect": 2.5, "read": 30, "idle": 120},
        },
        "servers": [
            {"host": "alpha.internal", "port": 9001, "weight": 0.7},
            {"host": "beta.internal", "port": 9002, "weight": 0.3},
        ],
        "features": {
            "search": True,
            "uploads": False,
            "beta": {"rollout": 0.25, "groups": ["staff", "testers"]},
        },
        "logging": {"level": "info", "destinations": ["stderr", "/var/log/ccsync/bench.log"]},
        "greeting": "Gr\u00fc\u00dfe, \"friend\"\n",
        "services": [],
        "counter": 0,
    }
    probe = dict(document, services=[service_entry(0)])
    entry_length = len(encoded(dict(probe, services=[service_entry(0), service_entry(1)]))) - len(encoded(probe))
    services = document["services"]
    length = len(encoded(document))
    slack = max(160, size // 100)
    while length < size - slack:  # fill most of what is missing at once; the note pads the rest
        count = max(1, int((size - slack - length) / entry_length * 0.95))
        services.extend(service_entry(index) for index in range(len(services), len(services) + count))
        length = len(encoded(document))
    if length < size:
        document["note"] = "x" * max(0, size - length - 14)  # 14: the member's own text
    return render(document)


def service_entry(index):
    return {
        "name": "service-%d" % index, "host": "10.0.%d.%d" % (index // 250 % 250, index % 250),
        "port": 7000 + index % 1000, "enabled": index % 3 != 0,
        "labels": ["zone-%d" % (index % 4), "tier-%d" % (index % 3)],
    }


def render(document):
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def encoded(document):
    return render(document).encode()


def write_document(path, text):
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


def read_counter(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)["counter"]
