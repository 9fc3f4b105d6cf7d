-- The reader's scope itself (grants/scope.ts: a token scoped to namespaces or
-- clusters reads only theirs; an empty list is no bound), on rows with
-- `cluster` and `namespace` columns. Included by scopeBound.sql and
-- scopeBoundHours.sql, which add what they leave out of the platform canary.
-- Parameters: {scopeNamespaces:Array(String)} {scopeClusters:Array(String)}
(empty({scopeClusters:Array(String)}) OR has({scopeClusters:Array(String)}, cluster))
    AND (empty({scopeNamespaces:Array(String)}) OR has({scopeNamespaces:Array(String)}, namespace))
