-- GPU reservations (quotas) per team and period: the seed gpu_reservations, plus any landed as
-- <landing>/reference/reservations/*.csv (same columns), so quotas that change monthly need no code change.
with

seeded as (

    select * from {{ ref('gpu_reservations') }}

),

landed as (

    {{ read_optional_csv(
        'reference/reservations/*.csv',
        ['reservation_id', 'cluster_id', 'team_id', 'project_id', 'valid_from', 'valid_to', 'reserved_gpus']
    ) }}

),

unioned as (

    select
        reservation_id,
        cluster_id,
        team_id,
        project_id,
        cast(valid_from as string) as valid_from,
        cast(valid_to as string) as valid_to,
        cast(reserved_gpus as string) as reserved_gpus,
        'seed gpu_reservations' as source_file
    from seeded
    union all
    select
        reservation_id,
        cluster_id,
        team_id,
        project_id,
        valid_from,
        valid_to,
        reserved_gpus,
        filename as source_file
    from landed

),

final as (

    select
        trim(reservation_id) as reservation_id,
        trim(cluster_id) as cluster_id,
        lower(trim(team_id)) as team_id,
        lower(trim(project_id)) as project_id,
        -- a value that does not parse stays null and fails the not_null tests, naming the column
        try_cast(trim(valid_from) as date) as valid_from,
        try_cast(trim(valid_to) as date) as valid_to,
        try_cast(trim(reserved_gpus) as decimal(18, 6)) as reserved_gpus,
        source_file
    from unioned

)

select * from final
