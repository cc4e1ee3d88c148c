"""Turn the provider's listing entries into job records: good files and rejected ones."""

from __future__ import annotations

from dlpipe.domain.cipher_format import NO_CIPHER
from dlpipe.domain.clock import iso_from_ms, normalized_iso
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.listing import FileDescriptor, RejectedFile
from dlpipe.domain.model import FileJob, JobStatus, make_file_id
from dlpipe.domain.rules import job_ttl_epoch_s


def job_from_descriptor(
    descriptor: FileDescriptor,
    batch_id: str,
    now_ms: int,
    listing_index: int | None = None,
    feed: str = DEFAULT_FEED_NAME,
) -> FileJob:
    """An available job of `feed` (its batch's) for one file the provider listed (entry
    `listing_index` of the day)."""
    return FileJob(
        file_id=make_file_id(descriptor.entity, descriptor.date, feed),
        batch_id=batch_id,
        status=JobStatus.AVAILABLE,
        entity=descriptor.entity,
        download_date=descriptor.date,
        presigned_url=descriptor.url,
        encrypted_aes_key=descriptor.encrypted_key,
        encoded_aes_iv=descriptor.iv,
        cipher=descriptor.cipher,
        created_at=iso_from_ms(now_ms),
        status_updated_at_ms=now_ms,
        ttl_epoch_s=job_ttl_epoch_s(now_ms // 1000),
        expected_size=descriptor.size,
        expected_sha256=descriptor.sha256,
        url_expires_at=normalized_iso(descriptor.expires_at),
        listing_index=listing_index,
        feed=feed,
    )


def error_job(
    rejected: RejectedFile,
    batch_id: str,
    date: str,
    now_ms: int,
    listing_index: int | None = None,
    *,
    feed: str = DEFAULT_FEED_NAME,
) -> FileJob | None:
    """An `error` job recording why a listed file was refused, or None if it has no safe FileID."""
    if rejected.entity is None:
        return None  # e.g. "../../etc": recorded on the batch instead, never as a key
    try:
        file_id = make_file_id(rejected.entity, date, feed)
    except InvalidIdentifierError:
        return None
    return FileJob(
        file_id=file_id,
        batch_id=batch_id,
        status=JobStatus.ERROR,
        entity=rejected.entity,
        download_date=date,
        presigned_url="",
        encrypted_aes_key="",
        encoded_aes_iv="",
        cipher=NO_CIPHER,
        created_at=iso_from_ms(now_ms),
        status_updated_at_ms=now_ms,
        ttl_epoch_s=job_ttl_epoch_s(now_ms // 1000),
        # Whole: the table write masks it, then cuts it (adapters/items.py's stored_error); a
        # cut first could leave a piece of an echoed token too short to be recognised.
        error_message=f"rejected_listing: {rejected.reason}",
        listing_index=listing_index,
        feed=feed,
    )


def listed_file_id(
    entry: FileDescriptor | RejectedFile, date: str, feed: str = DEFAULT_FEED_NAME
) -> str | None:
    """The FileID a listing entry's job has in `feed` (a file's, or its refusal's), None if
    it has none."""
    if entry.entity is None:
        return None
    try:
        return make_file_id(
            entry.entity, entry.date if isinstance(entry, FileDescriptor) else date, feed
        )
    except InvalidIdentifierError:
        return None
