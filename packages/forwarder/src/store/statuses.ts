/**
 * The `status` column of a row of `deliveries`, the same in every dialect (SQLite and PostgreSQL
 * store the number). The schema's partial indexes say `WHERE status = 0`: PENDING stays 0.
 */
export const PENDING = 0;
export const DELIVERED = 1;
export const FAILED = 2;
/** Failed by its source's deletion: counted failed, but an attempt in flight then may still record it delivered. */
export const ABANDONED = 3;
