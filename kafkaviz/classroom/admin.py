from django.contrib import admin

from .models import Member, Room


class MemberInline(admin.TabularInline):
    model = Member
    # Who is connected is not a column: it is the members' socket leases (the presenter's roster shows it).
    fields = ("name", "granted", "removed", "joined", "last_seen")
    readonly_fields = ("removed", "joined", "last_seen")
    extra = 0


@admin.register(Room)
class RoomAdmin(admin.ModelAdmin):
    list_display = ("code", "lesson", "instructor", "created", "closed")
    list_filter = ("closed", "lesson")
    readonly_fields = ("code", "sandbox_id", "created")
    exclude = ("run",)
    inlines = [MemberInline]
