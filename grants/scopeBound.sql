-- The reader's scope as a bound on rows with `cluster` and `namespace`
-- columns (grants/scope.ts: a token scoped to namespaces or clusters reads
-- only theirs; an empty list is no bound). The one definition: the grant
-- filter and every report a scoped token reads include it with `-- @include`.
-- It also leaves out the platform's canary (its namespace) unless {withCanary}:
-- no report counts the canary's grants; exports and the grants check keep
-- them (they are in the record), and grant history shows them when asked by
-- namespace, key or key prefix.
-- Parameters: {scopeNamespaces:Array(String)} {scopeClusters:Array(String)} {canaryNamespace:String} {withCanary:UInt8}
(empty({scopeClusters:Array(String)}) OR has({scopeClusters:Array(String)}, cluster))
    AND (empty({scopeNamespaces:Array(String)}) OR has({scopeNamespaces:Array(String)}, namespace))
    AND ({withCanary:UInt8} = 1 OR namespace != {canaryNamespace:String})
