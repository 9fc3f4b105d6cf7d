-- The grant filter, as a grant's events read it (the third fragment beside
-- filterPrewhere.sql and filterWhere.sql): the part an event carries with the same
-- meaning (a grant's start and end events hold its namespace, class and
-- holder). The grants check (exporters/sql/grants_check*.sql) applies it to
-- its reads of events and of the window's grant revisions, before FINAL, so
-- a one-namespace export no longer merges every namespace's events of each
-- day. Columns an event never changes (its revision and key fix them). It cannot hide an edit: a row whose namespace,
-- class or holder was altered no longer finds its events here and is named
-- (no start event, or its events side finds it differing), as before.
-- The reader's scope (scopeBound.sql) bounds it as it bounds the grants.
-- Parameters: {namespace:String} {class:String} {holder:String}
({namespace:String} = '' OR namespace = {namespace:String})
    AND
-- @include grants/scopeBound.sql
    AND ({class:String} = '' OR class = {class:String})
    AND ({holder:String} = '' OR holder = {holder:String})
