"""``manage.py policymodel [--seed S] [--nights N] [--fail-prob P]``: print what the
listing ``measure/jobs.mjs`` of "Jobs and Scheduled Jobs" prints for these
parameters, character for character (the model is :mod:`insights.policymodel`)."""
import math

from django.core.management.base import BaseCommand, CommandError

from insights import policymodel

MAX_NIGHTS = 100_000  # a few seconds; the model keeps every night in memory


class Command(BaseCommand):
    help = ("Print the jobs / cron-job policy model's four tables (attempt limit, "
            "parallelism, overlap policies, startup window) as measure/jobs.mjs does.")

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=policymodel.SEED,
                            help=f"generator seed (default {policymodel.SEED})")
        parser.add_argument("--nights", type=int, default=policymodel.NIGHTS,
                            help=f"nights to model, >= 0 (default {policymodel.NIGHTS})")
        parser.add_argument("--fail-prob", type=float, default=policymodel.FAIL_PROB,
                            help="probability that one attempt fails, 0 to 1 "
                                 f"(default {policymodel.FAIL_PROB})")

    def handle(self, *args, seed: int, nights: int, fail_prob: float, **options):
        if not 0 <= nights <= MAX_NIGHTS:
            raise CommandError(f"--nights must be from 0 to {MAX_NIGHTS}")
        if not (math.isfinite(fail_prob) and 0 <= fail_prob <= 1):
            raise CommandError("--fail-prob must be between 0 and 1")
        if abs(seed) > policymodel.MAX_SAFE_INTEGER:
            raise CommandError("--seed must be a safe JavaScript integer (|seed| <= 2**53-1)")
        listing = policymodel.model_listing(seed=seed, nights=nights, fail_prob=fail_prob)
        self.stdout.write("\n".join(policymodel.render_listing(listing)) + "\n", ending="")
