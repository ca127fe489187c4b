"""cronradar_sdk.config: settings from arguments over the environment. Standard
library only: also run under Python 3.8 (tests/sdk/test_python38.py)."""
import unittest

from cronradar_sdk.config import Settings, resolve

ENV = {"CRONRADAR_URL": "https://cr.example/", "CRONRADAR_PING_KEY": "pk",
       "CRONRADAR_API_KEY": "cr_api", "CRONRADAR_PING_URL": "https://cr.example/ping/u/"}


class Resolve(unittest.TestCase):
    def test_from_the_environment(self):
        self.assertEqual(resolve(environ=ENV), Settings(
            url="https://cr.example", ping_key="pk", api_key="cr_api",
            ping_url="https://cr.example/ping/u", timeout=10.0))

    def test_arguments_override_the_environment_an_empty_one_too(self):
        self.assertEqual(resolve(url="http://127.0.0.1:8000", ping_key="", api_key="k2",
                                 ping_url=" http://x/ping/v ", timeout=2, environ=ENV),
                         Settings(url="http://127.0.0.1:8000", ping_key="", api_key="k2",
                                  ping_url="http://x/ping/v", timeout=2.0))

    def test_nothing_set(self):
        self.assertEqual(resolve(environ={}), Settings())

    def test_os_environ_by_default(self):
        from unittest import mock

        with mock.patch.dict("os.environ", ENV):
            self.assertEqual(resolve().api_key, "cr_api")

    def test_a_timeout_must_be_more_than_0(self):
        for bad in (0, -1.5):
            with self.assertRaises(ValueError):
                resolve(timeout=bad, environ={})


class Urls(unittest.TestCase):
    def test_ping_base_of_a_slug_and_of_the_ping_url(self):
        s = resolve(environ=ENV)
        self.assertEqual(s.ping_base("nightly-report"), "https://cr.example/ping/pk/nightly-report")
        self.assertEqual(s.ping_base("a/b c"), "https://cr.example/ping/pk/a%2Fb%20c")
        self.assertEqual(s.ping_base(None), "https://cr.example/ping/u")

    def test_ping_base_cannot_be_named(self):
        self.assertEqual(resolve(url="https://cr.example", environ={}).ping_base("x"), "")
        self.assertEqual(resolve(ping_key="pk", environ={}).ping_base("x"), "")
        self.assertEqual(resolve(environ={}).ping_base(None), "")

    def test_api_url(self):
        self.assertEqual(resolve(environ=ENV).api_url("/monitors/by-slug/x/"),
                         "https://cr.example/api/v1/monitors/by-slug/x/")
        self.assertEqual(resolve(environ={}).api_url("/monitors/"), "")

    def test_replace(self):
        self.assertEqual(resolve(environ={}).replace(ping_url="http://x/ping/u"),
                         Settings(ping_url="http://x/ping/u"))


if __name__ == "__main__":
    unittest.main()
