"""The ledger: receipts, deliveries, work items, side effects (SQLModel; SQLite or PostgreSQL)."""

from ledger._engine import make_engine, normalize_url
from ledger._intake_store import SqlIntakeStore
from ledger._migrate import LedgerSchemaError, current_revision, downgrade, head_revision, require_current, upgrade
from ledger._side_effects import AttemptIdentity, BeginResult, BeginState, ClaimStanding, SideEffectLedger
from ledger._work_store import OpenVersion, WorkStore
from ledger._models import Delivery, Receipt, SideEffect, WorkItem, WorkVersion
from ledger._credentials import Credential, CredentialBroker, CredentialProblem
from ledger._dead_letters import DeadLetter, DeadLetters
from ledger._budgets import (
    BudgetDay, BudgetReservation, DayBudgetExceeded, DayBudgets, ReservationEnded, ReservationStatus, StaleSweep,
    StepRef,
)
from ledger._model_journal import ModelJournal, ModelJournalEntry
from ledger._kills import Kill, KillSwitch
from ledger._watermarks import ScanWatermark, Watermark, WatermarkStore

__all__ = [
    "AttemptIdentity", "BeginResult", "BeginState", "ClaimStanding", "SideEffectLedger", "WorkStore",
    "Delivery", "LedgerSchemaError", "Receipt", "SideEffect", "SqlIntakeStore", "WorkItem", "WorkVersion",
    "current_revision", "downgrade", "head_revision", "make_engine", "normalize_url", "require_current", "upgrade",
]
__all__ += ["Credential", "CredentialBroker", "CredentialProblem", "DeadLetter", "DeadLetters", "BudgetDay", "DayBudgetExceeded", "DayBudgets", "Kill", "KillSwitch", "ScanWatermark", "Watermark", "WatermarkStore"]
from ledger._capacity import CapacityLedger, CapacityRefused
from ledger._capacity_models import AdmissionCount, Breaker, CapacityCounter, CapacityHold, DeferredItem, RateBucket
from ledger._deferred import DeferredQueue, PoisonLetters
from ledger._breakers import BreakerBoard
from ledger._retention import RULES as RETENTION_RULES, Retention

__all__ += ["AdmissionCount", "Breaker", "BreakerBoard", "CapacityCounter", "CapacityHold", "CapacityLedger",
            "CapacityRefused", "DeferredItem", "DeferredQueue", "PoisonLetters", "RateBucket", "RETENTION_RULES",
            "Retention"]
from ledger._cancels import CancelRequest, CancelRequests

__all__ += ["CancelRequest", "CancelRequests", "OpenVersion"]
__all__ += ["BudgetReservation", "ModelJournal", "ModelJournalEntry", "ReservationEnded", "ReservationStatus",
            "StaleSweep", "StepRef"]
from ledger._queries import Chain, ReceiptFilter, explain, list_receipts
from ledger._reads import (
    ReceiptPage, ReceiptQuery, budget_days, dead_letters_page, decision_counts, decisions_by_hour, finished_runs,
    open_dead_letter_counts, receipts_page, recent_kills,
)

__all__ += ["Chain", "ReceiptFilter", "explain", "list_receipts"]
__all__ += ["ReceiptPage", "ReceiptQuery", "budget_days", "dead_letters_page", "decision_counts", "decisions_by_hour",
            "finished_runs", "open_dead_letter_counts", "receipts_page", "recent_kills"]
from ledger._kept import KeptCaps, KeptContent, KeptDeliveries, KeptDelivery

__all__ += ["KeptCaps", "KeptContent", "KeptDeliveries", "KeptDelivery"]
