"""cronradar_sdk.cli: ``exec`` goes to cronradar_exec.main with its arguments as
they were; ``apply`` and ``export`` need a URL and a key; bad arguments exit 2."""
import pytest
from cronradar_sdk import cli, cronradar_exec


def test_exec_is_cronradar_exec_main_with_the_arguments_unchanged(monkeypatch):
    seen = []
    monkeypatch.setattr(cronradar_exec, "main", lambda argv: seen.append(argv) or 7)
    argv = ["exec", "--url", "https://cr/ping/x", "--", "sh", "-c", "exit 3", "--prune"]
    assert cli.main(argv) == 7
    assert seen == [argv]


def test_apply_without_a_service_url_exits_1_saying_what_to_set(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("CRONRADAR_URL", raising=False)
    monkeypatch.setenv("CRONRADAR_API_KEY", "k")
    assert cli.main(["apply", "-f", str(tmp_path / "m.json")]) == 1
    assert capsys.readouterr().err == ("cronradar apply: no service URL: set CRONRADAR_URL "
                                       "(or give url=)\n")


@pytest.mark.parametrize("argv", [[], ["apply"], ["export", "--format", "toml"], ["nope"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and capsys.readouterr().err.startswith("usage: cronradar")


def test_a_file_that_is_not_valid_exits_1_listing_its_problems(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CRONRADAR_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CRONRADAR_API_KEY", "k")
    path = tmp_path / "m.json"
    path.write_text('{"version": 1, "monitors": [{"name": "x"}, {"slug": "a", "colour": 1}]}')
    assert cli.main(["apply", "-f", str(path)]) == 1
    assert capsys.readouterr().err == ("cronradar apply: monitors[0]: slug: required\n"
                                       "monitors[1] (a): colour: unknown field\n")
