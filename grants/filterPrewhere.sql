-- The grant filter, part 1 of 2 (part 2: filterWhere.sql): the conditions on
-- columns a grant never changes, for the PREWHERE of every query over
-- `grants` / `grants_by_holder` (grant history, its Arrow pages, exports and
-- their plans). PREWHERE runs before FINAL merges a grant's open and closed
-- rows: the same rows are kept, far fewer are merged. An empty filter string
-- (hasToken 0) means "no filter". Built by grantFilterParams()
-- (grants/filter.ts); included with `-- @include` (platform/sql.ts
-- says why not a parameterized view). The key is `key = if(…)`, not
-- `'' = k OR key = k`: with a key given ClickHouse sees a plain equality, so
-- a table sorted by (key, granted_at, …) — grants_by_key, sql/140 — is read in
-- the page's order (the OR form hides it and forces a full sort). The window rule is a parameter:
--   overlapping: grants whose hold overlaps [from, to] (granted at or before
--                to, and — where.sql — still held at or after from);
--   granted:     grants granted in [from, to) (disjoint ranges never share a grant).
-- The reader's scope (scopeBound.sql) bounds every read on top of its filters.
-- Parameters: {cluster:String} {key:String} {keyPrefix:String} {holder:String} {class:String} {namespace:String} {hasToken:UInt8} {token:UInt64} {window:String} {fromMs:Int64} {toMs:Int64}
({cluster:String} = '' OR cluster = {cluster:String})
    AND
-- @include grants/scopeBound.sql
    AND key = if({key:String} = '', key, {key:String})
    AND ({keyPrefix:String} = '' OR startsWith(key, {keyPrefix:String}))
    AND ({holder:String} = '' OR holder = {holder:String})
    AND ({class:String} = '' OR class = {class:String})
    AND ({namespace:String} = '' OR namespace = {namespace:String})
    AND ({hasToken:UInt8} = 0 OR token = {token:UInt64})
    AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
    AND ({window:String} = 'overlapping'
         OR ({window:String} = 'granted'
             AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
             AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')))
