"""The per-kind channel form (cronradar.dashboard.channel_form), from the kinds'
constants."""
import types

from alerts.integrations import KINDS
from cronradar.dashboard.channel_form import Field, config_from, fields, summary, values_of


def test_fields_come_from_the_schema_required_first_read_only_left_out():
    assert fields(KINDS["webhook"]) == [
        Field("url", "URL the JSON is POSTed to (http or https)", "url", required=True),
        Field("secret", "signing secret, the HMAC key of both signatures (left out: 32 random "
              "bytes, hex)", "password")]
    assert fields(KINDS["email"]) == [Field("to", "email addresses (1 to 20)", "text",
                                            required=True, many=True)]
    fake = types.ModuleType("fake")
    fake.CONFIG_SCHEMA = {"required": ["b"], "properties": {
        "a": {"type": "string", "enum": ["x", "y"]}, "b": {"type": "string"}}}
    assert fields(fake) == [Field("b", "b", "text", required=True),
                            Field("a", "a", "select", choices=("x", "y"))]


def test_every_kind_has_help_with_a_link_and_labels_for_its_fields():
    for kind, module in KINDS.items():
        assert "https://" in module.HELP or kind == "email", kind
        assert all(f.label != f.name for f in fields(module)), kind
        assert summary(module), kind


def test_the_summary_is_the_docstrings_first_paragraph_on_one_line():
    assert summary(KINDS["email"]) == (
        "Email through Django's mail backend (EMAIL_URL: SMTP in production; the console in "
        "the embedded default, so notifications show in serve's output).")
    assert summary(types.ModuleType("bare")) == ""


def test_config_from_a_form_strips_splits_and_keeps_a_stored_secret_left_empty():
    asked = fields(KINDS["ntfy"])
    assert config_from({"url": " https://ntfy.sh/a ", "token": ""}, asked) == {
        "url": "https://ntfy.sh/a"}
    assert config_from({"url": "https://ntfy.sh/a", "token": ""}, asked,
                       {"url": "old", "token": "tk"}) == {"url": "https://ntfy.sh/a",
                                                          "token": "tk"}
    assert config_from({"url": "u", "token": "new"}, asked, {"token": "tk"}) == {
        "url": "u", "token": "new"}
    assert config_from({"to": "a@example.com, ,b@example.com"}, fields(KINDS["email"])) == {
        "to": ["a@example.com", "b@example.com"]}


def test_values_of_a_stored_config_join_lists_and_never_show_a_secret():
    assert values_of({"url": "https://h.test/", "secret": "s3cret"},
                     fields(KINDS["webhook"])) == {"url": "https://h.test/"}
    assert values_of({"to": ["a@example.com", "b@example.com"]}, fields(KINDS["email"])) == {
        "to": "a@example.com, b@example.com"}
