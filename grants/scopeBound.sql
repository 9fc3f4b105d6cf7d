-- The reader's scope as a bound on rows with `cluster` and `namespace`
-- columns (grants/scope.ts: a token scoped to namespaces or clusters reads
-- only theirs; an empty list is no bound). The one definition: the grant
-- filter and every report a scoped token reads include it with `-- @include`.
-- Parameters: {scopeNamespaces:Array(String)} {scopeClusters:Array(String)}
(empty({scopeClusters:Array(String)}) OR has({scopeClusters:Array(String)}, cluster))
    AND (empty({scopeNamespaces:Array(String)}) OR has({scopeNamespaces:Array(String)}, namespace))
