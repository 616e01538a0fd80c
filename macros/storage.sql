{#- Storage helpers: how a bill's resource id meets the cloud disk a Kubernetes PersistentVolume names. -#}

{#- The key a cloud volume is matched on: the last path element, lower case. The same disk is named
    `vol-0abc` (CUR lineItem/ResourceId, the EBS CSI volume handle),
    `arn:aws:ec2:us-east-1:123456789012:volume/vol-0abc` (some FOCUS exports), `aws://us-east-1a/vol-0abc`
    (the in-tree ebs_volume_id), `//compute.googleapis.com/projects/p/zones/z/disks/pvc-1` (GCP export)
    vs `projects/p/zones/z/disks/pvc-1` (GCE PD CSI handle), and
    `/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/disks/pvc-1` (Azure; its case varies
    between the bill and the CSI handle): all end in the disk's name. -#}
{% macro volume_key(resource) -%}
    nullif(lower(regexp_extract(trim({{ resource }}), '([^/]+)/*$', 1)), '')
{%- endmacro %}
