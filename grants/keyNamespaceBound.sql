-- The reader's namespace scope on rows that have a `key` but no namespace
-- column (quarantined changes, two-person acts, the token lookup's routing
-- table): the namespace is the key's first segment after its hold or queue
-- prefix, or of the key itself when it is a lock name. A system key, a spool
-- line or any key with no such segment has none, so a namespace-scoped
-- reader never sees it (grants/scope.ts; scopeBound.sql for rows with the
-- column).
-- Parameters: {scopeNamespaces:Array(String)} {holdPrefix:String} {queuePrefix:String}
(empty({scopeNamespaces:Array(String)})
    OR has({scopeNamespaces:Array(String)}, splitByChar('/', multiIf(
           startsWith(key, {holdPrefix:String}), substring(key, length({holdPrefix:String}) + 1),
           startsWith(key, {queuePrefix:String}), substring(key, length({queuePrefix:String}) + 1),
           key))[1]))
