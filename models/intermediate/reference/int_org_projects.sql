-- The org mapping's projects (landed reference/org_mapping), one row per project with its team and cost
-- centre: the declared side of dim_projects and dim_teams.
with

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

)

select * from org_mapping
