"""Tests of rxvoice.text."""
