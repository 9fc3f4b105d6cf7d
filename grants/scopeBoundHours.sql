-- The reader's bound on the sealed contention hours (contention_hours,
-- contention_key_hours, contention_handoffs: aggregates per key and hour,
-- with no origin or holder): its scope (scopeOnly.sql), and the platform
-- canary's namespace left out unless {withCanary} — holds written around the
-- API into that namespace included, as contention is no record of who wrote
-- what (grant history, the keyspace and the alerts are).
-- Parameters: {canaryNamespace:String} {withCanary:UInt8}
-- @include grants/scopeOnly.sql
    AND ({withCanary:UInt8} = 1 OR namespace != {canaryNamespace:String})
