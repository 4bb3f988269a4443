"""memorybench.secrets: every form a known secret takes in a message is masked, and a masked
YAML value stays YAML (issue 29, secrets)."""

from __future__ import annotations

import pytest
import yaml

from memorybench import secrets
from memorybench.pack.atomic import write_atomic
from memorybench.secrets import MASK, contains_secret, register, scrub, scrub_yaml, secret_forms

KEY = "sk-test-FORMS-0a1b2c3d4e5f6g7h"


@pytest.fixture(autouse=True)
def _registry(monkeypatch):
    # a registry of this test's own (register() is process-wide); no credential from the environment
    monkeypatch.setattr(secrets, "_registered", set())
    for name in [n for n in secrets.os.environ if secrets.CREDENTIAL_ENV.search(n.upper())]:
        monkeypatch.delenv(name)


def test_a_key_read_with_its_newline_is_masked_in_every_form_a_message_gives_it():
    register([KEY + "\n"])  # a key pasted from a file
    assert secrets.registered() == {KEY}
    # httpx's refusal of the header quotes it inside a bytes literal, the newline escaped
    for text in (
        f"Illegal header value b'Bearer {KEY}\\n'",
        f"value {KEY!r}",
        f'json {{"key": "{KEY}\\n"}}',
        f"  {KEY}  ",
        f"{KEY}\n",
        f"b'{KEY}'",
    ):
        assert KEY not in scrub(text) and MASK in scrub(text), text
        assert contains_secret(text)
    assert scrub(f"Illegal header value b'Bearer {KEY}\\n'") == "Illegal header value b'Bearer ***\\n'"


def test_escaped_and_percent_encoded_forms_of_a_key_with_special_characters():
    odd = "pa'ss\\word/with spaces+1"
    register([odd])
    assert secret_forms(odd) == {odd, "pa'ss\\\\word/with spaces+1", "pa%27ss%5Cword%2Fwith%20spaces%2B1"}
    for form in secret_forms(odd):
        assert scrub(f"<{form}>") == f"<{MASK}>"


def test_the_first_part_of_a_cut_key_is_masked_but_not_its_public_head():
    register([KEY])
    assert scrub(f"Incorrect API key provided: {KEY[:14]}...") == "Incorrect API key provided: ***..."
    assert scrub(f"ends with {KEY[:9]}") == "ends with ***"
    assert scrub("any sk-proj- key, and sk-test") == "any sk-proj- key, and sk-test"  # shorter than 8: nothing of ours
    assert not contains_secret("sk-test") and contains_secret(KEY[:8])
    project_key = "sk-proj-" + "Abcdefgh12345678" * 3
    register([project_key])
    assert scrub("keys start sk-proj-") == "keys start sk-proj-"  # the public head alone is no part of the key
    assert scrub(f"cut: {project_key[:12]}") == "cut: ***"


def test_a_masked_yaml_value_stays_yaml(tmp_path):
    register([KEY])
    text = f"reader:\n  model: {KEY}\n  other: {KEY}/x\n  list:\n  - {KEY}\n  quoted: '{KEY}'\n  text: a {KEY} b\nname: plain\n"
    cleaned = scrub_yaml(text)
    assert KEY not in cleaned
    data = yaml.safe_load(cleaned)
    assert data["reader"] == {"model": MASK, "other": f"{MASK}/x", "list": [MASK], "quoted": MASK, "text": f"a {MASK} b"}
    assert scrub_yaml("name: plain\n") == "name: plain\n"  # nothing known: byte for byte
    # a pack's YAML files are written through write_atomic: `memorybench track` reads them back
    path = write_atomic(tmp_path / "config.resolved.yaml", text.encode())
    assert yaml.safe_load(path.read_text())["reader"]["model"] == MASK
