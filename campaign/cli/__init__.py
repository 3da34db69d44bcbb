"""The command line: it parses and prints; the work is in campaign.batch and
campaign.supervisor."""

from ._main import main as main
